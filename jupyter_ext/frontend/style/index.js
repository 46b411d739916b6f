import './base.css';
import './proposals.css';
import './experience.css';
import './preferences.css';
import './models.css';
import './results.css';
