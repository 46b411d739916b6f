import './base.css';
import './proposals.css';
import './experience.css';
